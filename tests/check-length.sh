#!/bin/sh
# No function in src/ is longer than 120 lines (from its opening line to
# its closing brace at the start of a line), so that each can be read at
# once.  Prints "ok function-length" or "FAIL function-length" with the
# functions over the limit; exit status 1 then.
limit=120
long=$(for f in src/*/*.c; do
	awk -v f="$f" -v limit=$limit '
		/^[a-z].*\(/ && !/;$/ { name = $0; start = NR; infn = 1 }
		infn && /^}/ { if (NR - start + 1 > limit) printf "%d %s:%s\n", NR - start + 1, f, name; infn = 0 }
	' "$f"
done)
if [ -z "$long" ]; then
	echo "ok function-length (none over $limit lines)"
else
	echo "FAIL function-length (over $limit lines):"
	echo "$long" | sed 's/^/  /'
	exit 1
fi
