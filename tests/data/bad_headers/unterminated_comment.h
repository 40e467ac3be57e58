int f(int a);
  /* never closed
int g(int b);
