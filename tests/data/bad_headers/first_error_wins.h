void f(int a,, int b);


/* unterminated later
