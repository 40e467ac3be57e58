// symbols.h - fixture: what a library may lack.

// Inline: not exported.
inline int inl(const int x) { return x + 1; }

// Static: not exported.
static int stat(const int x) { return x + 2; }

// Exported.
int plain(const int x) { return x + 3; }

// Only tmpl<int> is compiled into the library.
template <class T>
T tmpl(const T x)
{
    return x;
}
