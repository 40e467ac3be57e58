void f(int a);
}
