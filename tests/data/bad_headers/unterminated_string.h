void f(int n)
{
    const char *s = "abc;
}
