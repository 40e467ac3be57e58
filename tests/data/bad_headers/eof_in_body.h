// doc
void foo(int a)
{
    if (a) {
        a = 1;
    }
