// a Latin-1 string literal quoted in the message
void f(int x "café");
