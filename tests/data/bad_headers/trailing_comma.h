void f(int a,);
