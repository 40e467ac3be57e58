// dispatch.h - fixture: overload selection.

// 10 * sizeof(I), plus 1 when I is floating: 40 int, 80 long, 81 double.
template <class I>
int tag(const I n)
{
    return 10 * (int)sizeof(I) + (I(1) / 2 != 0 ? 1 : 0);
}

// sizeof(T): which of two floating overloads ran.
template <class T>
int which(const T x)
{
    return (int)sizeof(T);
}

// Same kernel, listed in the other order.
template <class T>
int which_rev(const T x)
{
    return (int)sizeof(T);
}

// 10 * sizeof(T) + floating: double listed first, int second.
template <class T>
int prefer(const T x)
{
    return 10 * (int)sizeof(T) + (T(1) / 2 != 0 ? 1 : 0);
}

// F comes from the tuple only: returns sizeof(F), and writes sizeof(T) to x[0].
template <class I, class T, class F>
int ftag(const I J[], const int J_size, T x[], const int x_size)
{
    x[0] = (T)(int)sizeof(T);
    return (int)sizeof(F);
}

// The real half of a remapped pair: returns 1.
template <class T>
int scale_real(T x[], const int x_size, const T a)
{
    for (int i = 0; i < x_size; i++)
        x[i] *= a;
    return 1;
}

// The complex half of a remapped pair: returns 2.
template <class T>
int scale_complex(T x[], const int x_size, const T a)
{
    for (int i = 0; i < x_size; i++)
        x[i] *= a;
    return 2;
}

// Four overloads: returns 10 * sizeof(T) + floating and writes it to x[0].
template <class T>
int pick4(T x[], const int x_size)
{
    int t = 10 * (int)sizeof(T) + (T(1) / 2 != 0 ? 1 : 0);
    x[0] = (T)t;
    return t;
}
