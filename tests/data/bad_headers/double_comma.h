int foo(int a,, int b);
