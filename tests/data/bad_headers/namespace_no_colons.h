namespace a b c {
void f(int x);
}
