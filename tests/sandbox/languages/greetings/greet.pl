use strict;
use warnings;

my $name = <STDIN> // "world";
chomp $name;
printf "Hello, %s!\n", $name;
