void f(int n)
{
    char c = 'x;
}
