void f()
{
    auto s = R"x(never closed
}
