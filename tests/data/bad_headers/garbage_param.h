void f(int 3x);
