namespace a:: {
void f(int x);
}
