#!/bin/sh
# embed_text.sh IN OUT — turns a text asset (the JavaScript and CSS the SVG and
# HTML writers put into their output) into a C header holding it as one
# string constant, so the asset stays a normal .js/.css file in the tree and
# the writers need no file at run time.
#
#   c_src/writers/assets/flamegraph.js -> static const char BS_ASSET_flamegraph_js[]
#
# The name is BS_ASSET_ followed by the file's base name with every character
# that is not a letter or digit turned into '_'. The string is the file's
# bytes exactly: '\' '"' and '?' (trigraphs are on under -std=c11) are
# escaped, bytes outside printable ASCII become octal escapes, and each input
# line becomes one literal ending in \n (a missing final newline is added).
# A second constant, <name>_sha256, holds the base64 SHA-256 of those bytes,
# for a Content-Security-Policy that allows exactly this script. Deterministic;
# needs only awk and coreutils.
set -eu
in=$1
out=$2
name=BS_ASSET_$(basename "$in" | LC_ALL=C sed 's/[^A-Za-z0-9]/_/g')
tmp="$out.tmp.$$"
{
    printf '/* Generated from %s by scripts/embed_text.sh: do not edit. */\n' "$in"
    printf 'static const char %s[] =\n' "$name"
    LC_ALL=C awk '
        BEGIN {
            for (i = 1; i < 256; i++) byte[sprintf("%c", i)] = i
        }
        {
            s = ""
            n = length($0)
            for (k = 1; k <= n; k++) {
                c = substr($0, k, 1)
                b = byte[c]
                if (c == "\\") s = s "\\\\"
                else if (c == "\"") s = s "\\\""
                else if (c == "?") s = s "\\?"
                else if (c == "\t") s = s "\\t"
                else if (b < 32 || b > 126) s = s sprintf("\\%03o", b)
                else s = s c
            }
            printf "    \"%s\\n\"\n", s
        }
    ' "$in"
    printf '    "";\n'
    # sha256sum prints hex; awk turns it into printf octal escapes for base64.
    digest=$(LC_ALL=C awk 1 "$in" | sha256sum | cut -c1-64 | LC_ALL=C awk '{
        for (k = 1; k < 64; k += 2) printf "\\%03o", index("0123456789abcdef", substr($0, k, 1)) * 16 - 17 + index("0123456789abcdef", substr($0, k + 1, 1))
    }')
    # shellcheck disable=SC2059
    printf 'static const char %s_sha256[] = "%s";\n' "$name" "$(printf "$digest" | base64 -w0)"
} > "$tmp"
mv "$tmp" "$out"
