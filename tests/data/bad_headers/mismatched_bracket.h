void f(int a[);
