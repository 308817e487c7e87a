#!/usr/bin/perl
# A Claude Code hook inside the sandbox: hands the hook's JSON to the harness over the mounted socket
# ($ARGV[0]) and prints the harness's answer. Perl, because every Debian image has it (perl-base is
# essential) and the sandbox has no network to fetch anything else. Exit 1 (a non-blocking hook
# error) when the harness is not there.
use strict;
use warnings;
use IO::Socket::UNIX;
use Socket qw(SOCK_STREAM);

local $/;
my $input = <STDIN> // '';
my $harness = IO::Socket::UNIX->new(Type => SOCK_STREAM, Peer => $ARGV[0])
  or do { print STDERR "harnessforge hook: the harness is not listening on $ARGV[0]: $!\n"; exit 1 };
print $harness $input;
shutdown($harness, 1);
my $answer = <$harness> // '';
print $answer;
exit 0;
