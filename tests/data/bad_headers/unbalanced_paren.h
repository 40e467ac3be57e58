void f(int a;
