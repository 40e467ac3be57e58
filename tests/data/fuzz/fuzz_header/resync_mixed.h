int a(int n);
int bad1(int n,, int m);
namespace ns {
 int b(int n);
 template <class T int c(T x);
 struct broken { int x; ) };
}
}
int bad2(int n] ;
[[deprecated(int bad3(int n);
template <class T, int B = 4, class I = T> auto f(T x [[maybe_unused]][], const I x_size) -> T;
int old(a, b) int a; int b; { return a; }
auto d(int);
int f(int n);
