extern "C" {
void f(int x);
