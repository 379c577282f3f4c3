/* Links the runtime but never calls it: must leave no dump. */
#include <stdio.h>

int main(void)
{
	puts("no cuda here");
	return 0;
}
