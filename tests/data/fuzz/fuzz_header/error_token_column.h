void f(int a);
	  /* unterminated