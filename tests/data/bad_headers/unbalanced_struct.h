struct S {
    int a;
