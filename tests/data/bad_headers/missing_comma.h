template<class I>
void f(const I Ap[] const int Ap_size);
