void f(int a = );
