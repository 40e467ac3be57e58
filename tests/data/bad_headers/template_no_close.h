template <class I
void f(I x);
