// café is fine in a comment
int fé(int x);
