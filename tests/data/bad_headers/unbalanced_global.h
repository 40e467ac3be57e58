int main() { return (1; }
int x = (2;
