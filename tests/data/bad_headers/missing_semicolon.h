void f(int x)
void g(int y);
