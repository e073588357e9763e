#!/usr/bin/env python3
# gen_nfc_expect.py — regenerates tests/data/nfc_expect.tsv, the expectation
# table of tests/test_nfc.c: strings and their NFC form as Node's
# String.prototype.normalize("NFC") gives it (ICU), an implementation
# independent of tok-nfc.c and its tables.
#
# Node's ICU follows a newer Unicode than attnscope's tables (14.0.0), so
# every string here is made of code points assigned in Unicode 14.0.0
# (Python 3.11's unicodedata): NFC is stable for assigned characters, and
# Python's own unicodedata.normalize must agree with Node on every row (the
# script stops if it does not).
#
#   python3 tests/gen/gen_nfc_expect.py > tests/data/nfc_expect.tsv
#
# Rows: hand-picked cases (orders of marks, equal and different classes,
# blocked compositions, singletons, composition exclusions, Hangul,
# Vietnamese, Greek, Indic, Tibetan, kana, musical symbols, CJK
# compatibility ideographs, text already in NFC, ""); every code point with
# a canonical decomposition (Hangul syllables excepted), alone and as its
# full decomposition; a sample of Hangul syllables both ways; and seeded
# random strings from a pool of starters and combining marks.
import json
import random
import subprocess
import unicodedata as u

CASES = [
    ("empty", ""),
    ("e acute", "e\u0301"),
    ("dot below then circumflex", "a\u0323\u0302"),
    ("circumflex then dot below", "a\u0302\u0323"),
    ("circumflex then acute", "a\u0302\u0301"),
    ("acute then circumflex (blocked)", "a\u0301\u0302"),
    ("grave then acute (blocked)", "a\u0300\u0301"),
    ("acute then grave (blocked)", "a\u0301\u0300"),
    ("acute twice", "e\u0301\u0301\u0301"),
    ("diaeresis then acute", "u\u0308\u0301"),
    ("acute then diaeresis", "u\u0301\u0308"),
    ("horn then dot below", "o\u031b\u0323"),
    ("dot below then horn", "o\u0323\u031b"),
    ("overlay (class 1) then acute", "a\u0334\u0301"),
    ("hebrew point (class 10) then acute", "a\u05b0\u0301"),
    ("class 232 then grave", "a\u0315\u0300"),
    ("ypogegrammeni then acute", "a\u0345\u0301"),
    ("cedilla and acute", "C\u0327\u0301"),
    ("acute and cedilla", "C\u0301\u0327"),
    ("C cedilla and acute", "\u00c7\u0301"),
    ("s dot above and below", "s\u0307\u0323"),
    ("d dot above and below", "d\u0307\u0323"),
    ("q marks without composites", "q\u0307\u0323"),
    ("blocked by a starter", "a-\u0301"),
    ("blocked by ZWJ", "a\u200d\u0301"),
    ("blocked by CGJ (class 0)", "a\u034f\u0301"),
    ("mark first", "\u0301a"),
    ("marks alone", "\u0301\u0300\u0323"),
    ("mark alone", "\u0301"),
    ("Angstrom sign", "\u212b"),
    ("Angstrom sign in a word", "\u212bngstr\u00f6m"),
    ("A ring", "A\u030a"),
    ("Angstrom decomposed", "A\u030angstro\u0308m"),
    ("Ohm sign", "\u2126"),
    ("Kelvin sign", "\u212a"),
    ("en quad", "\u2000"),
    ("left-pointing angle bracket", "\u2329\u232a"),
    ("Greek question mark", "\u037e"),
    ("Greek ano teleia", "\u0387"),
    ("Greek numeral sign", "\u0374"),
    ("combining grave tone mark", "a\u0340"),
    ("combining acute tone mark", "a\u0341"),
    ("combining koronis", "\u03b1\u0343"),
    ("dialytika tonos (non-starter decomposition)", "\u03b9\u0344"),
    ("dialytika tonos alone", "\u0344"),
    ("alpha oxia (singleton)", "\u1f71"),
    ("alpha tonos", "\u03b1\u0301"),
    ("iota dialytika tonos", "\u03b9\u0308\u0301"),
    ("iota tonos dialytika", "\u03b9\u0301\u0308"),
    ("alpha psili oxia ypogegrammeni", "\u03b1\u0345\u0313\u0301"),
    ("alpha ypogegrammeni perispomeni psili", "\u03b1\u0345\u0342\u0313"),
    ("omega with four marks", "\u03c9\u0314\u0342\u0345"),
    ("Greek word decomposed", "\u039a\u03b1\u03bb\u03b7\u03bc\u03b5\u0301\u03c1\u03b1"),
    ("Greek polytonic", "\u1f00\u0301 \u1fb3\u0313"),
    ("Devanagari qa (exclusion)", "\u0958"),
    ("Devanagari ka nukta", "\u0915\u093c"),
    ("Devanagari nnna (composes)", "\u0928\u093c"),
    ("Devanagari nnna precomposed", "\u0929"),
    ("Devanagari ra nukta", "\u0930\u093c \u0933\u093c"),
    ("Devanagari za (exclusion)", "\u095b\u093e"),
    ("Bengali o", "\u09c7\u09be"),
    ("Bengali au", "\u09c7\u09d7"),
    ("Bengali rra (exclusion)", "\u09dc"),
    ("Gurmukhi (exclusions)", "\u0a33\u0a36\u0a59\u0a5e"),
    ("Oriya", "\u0b47\u0b3e \u0b47\u0b56 \u0b47\u0b57 \u0b5c"),
    ("Tamil", "\u0bc6\u0bbe \u0b92\u0bd7 \u0bc7\u0bbe \u0bc6\u0bd7"),
    ("Telugu", "\u0c46\u0c56"),
    ("Kannada", "\u0cc6\u0cc2 \u0cbf\u0cd5 \u0cc6\u0cd5 \u0cc6\u0cd6"),
    ("Kannada three", "\u0cc6\u0cc2\u0cd5"),
    ("Malayalam", "\u0d46\u0d3e \u0d47\u0d3e \u0d46\u0d57"),
    ("Sinhala", "\u0dd9\u0dca \u0dd9\u0dcf \u0dd9\u0dcf\u0dca \u0dd9\u0ddf"),
    ("Tibetan gha (exclusion)", "\u0f43"),
    ("Tibetan vowel signs", "\u0f73 \u0f75 \u0f81"),
    ("Tibetan i then aa", "\u0f40\u0f72\u0f71"),
    ("Tibetan aa then i", "\u0f40\u0f71\u0f72"),
    ("Tibetan subjoined", "\u0f93 \u0f9d \u0fb9"),
    ("Myanmar", "\u1025\u102e"),
    ("Balinese", "\u1b05\u1b35 \u1b3a\u1b35 \u1b42\u1b35"),
    ("hiragana voiced", "\u304b\u3099\u306f\u309a"),
    ("katakana vu", "\u30a6\u3099"),
    ("iteration marks", "\u309d\u3099\u30fd\u3099"),
    ("kana blocked", "\u304b\u0301\u3099"),
    ("musical half note (exclusion)", "\U0001d15e"),
    ("musical eighth note (exclusion)", "\U0001d160"),
    ("musical decomposed", "\U0001d158\U0001d165\U0001d16e"),
    ("musical semibrevis", "\U0001d1bb\U0001d1bc\U0001d1bf"),
    ("CJK compatibility ideograph", "\uf900"),
    ("CJK compatibility ideographs", "\ufa10\ufa2e\ufad9"),
    ("CJK compatibility supplement", "\U0002f800\U0002fa1d"),
    ("CJK unified in the compatibility block", "\ufa0e\ufa0f"),
    ("Hebrew presentation forms (exclusions)", "\ufb1d\ufb2c\ufb4e"),
    ("Hebrew shin dot", "\u05e9\u05bc\u05c1"),
    ("Hangul L V", "\u1100\u1161"),
    ("Hangul L V T", "\u1100\u1161\u11a8"),
    ("Hangul LV T", "\uac00\u11a8"),
    ("Hangul LVT T", "\uac01\u11a8"),
    ("Hangul L T", "\u1100\u11a8"),
    ("Hangul last", "\u1112\u1175\u11c2"),
    ("Hangul precomposed", "\uac00\ud7a3\ud55c\uad6d\uc5b4"),
    ("Hangul word decomposed", "\u1112\u1161\u11ab\u1100\u116e\u11a8\u110b\u1165"),
    ("Hangul TBase is no T", "\u1100\u1161\u11a7"),
    ("Hangul V past the range", "\u1100\u1176"),
    ("Hangul L past the range", "\u1113\u1161"),
    ("Hangul V V", "\u1100\u1161\u1161"),
    ("Hangul blocked by a mark", "\u1100\u0301\u1161"),
    ("Hangul mark before T", "\u1100\u1161\u0301\u11a8"),
    ("Hangul LV precomposed then V", "\uac00\u1161"),
    ("Vietnamese", "Tie\u0302\u0301ng Vie\u0323\u0302t"),
    ("Vietnamese other order", "Tie\u0301\u0302ng Vie\u0302\u0323t"),
    ("Vietnamese sentence NFD", u.normalize("NFD", "T\u00f4i y\u00eau ti\u1ebfng Vi\u1ec7t Nam, "
                                            "ng\u01b0\u1eddi \u0111\u1eb9p")),
    ("Vietnamese horn", "u\u031b\u0300 o\u031b\u0309 u\u0309\u031b"),
    ("Latin NFD", u.normalize("NFD", "na\u00efve caf\u00e9 \u00c5ngstr\u00f6m \u1e08 \u01d8")),
    ("already NFC", "Hello, world!"),
    ("already NFC accents", "na\u00efve caf\u00e9 \u00e0 la cr\u00e8me"),
    ("already NFC CJK", "\u65e5\u672c\u8a9e \ud55c\uad6d\uc5b4 \u4e2d\u6587"),
    ("already NFC Greek", "\u039a\u03b1\u03bb\u03b7\u03bc\u03ad\u03c1\u03b1"),
    ("already NFC maybe", "\u0cc2\u0301"),
    ("emoji", "\U0001f600\u0301 \U0001f44d\U0001f3fd"),
    ("long run", "a" + "\u0301\u0323" * 20),
    ("long run 2", "o" + "\u031b\u0301\u0323\u0300\u0345" * 9 + "x\u0302"),
]

# the random strings' pool: starters (some first of a composite) and marks
STARTERS = ("aeiouAEOUcCnNsSyzwgkKoh-. \u00e0\u00e2\u00e7\u00fc\u03b1\u03b9\u03c9\u03a9"
            "\u0415\u0438\u0915\u0928\u09c7\u0b47\u0cc6\u0dd9\u0f40\u304b\u30a6\u309d"
            "\u1100\u1112\u1161\u1175\u11a8\u11c2\uac00\uac01\u212b\u2126\u0958\uf900"
            "\u1f71\u0cc2\u09be\u0bbe")
MARKS = ("\u0300\u0301\u0302\u0303\u0304\u0306\u0307\u0308\u0309\u030a\u030b\u030c\u031b"
         "\u0323\u0324\u0325\u0327\u0328\u032d\u0330\u0331\u0313\u0314\u0342\u0345\u0334"
         "\u0338\u0315\u0316\u05b0\u093c\u0f71\u0f72\u0f74\u0f80\u3099\u309a\u0340\u0341"
         "\u0343\u0344\u1dce\u20d2\U0001d165\U0001d16e")


def random_strings(rng):
    out = []
    for i in range(400):
        n = rng.randint(1, 8)
        s = "".join(rng.choice(MARKS) if rng.random() < 0.55 else rng.choice(STARTERS)
                    for _ in range(n))
        out.append(("random %d" % i, s))
    for i in range(20):
        n = rng.randint(33, 90)
        s = rng.choice(STARTERS) + "".join(rng.choice(MARKS) for _ in range(n))
        out.append(("random long %d" % i, s))
    return out


def table_rows():
    rows = []
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF or 0xAC00 <= cp <= 0xD7A3:
            continue
        c = chr(cp)
        d = u.normalize("NFD", c)
        if d != c:
            rows.append(("U+%04X" % cp, c))
            rows.append(("U+%04X decomposed" % cp, d))
    return rows


def hangul_rows(rng):
    rows = []
    for cp in sorted(rng.sample(range(0xAC00, 0xD7A4), 100)) + [0xAC00, 0xD7A3]:
        rows.append(("U+%04X" % cp, chr(cp)))
        rows.append(("U+%04X decomposed" % cp, u.normalize("NFD", chr(cp))))
    return rows


def assigned(s):
    return all(u.category(c) != "Cn" for c in s)


def node_nfc(strings):
    js = ("let s = ''; process.stdin.on('data', d => s += d); process.stdin.on('end', () =>"
          " process.stdout.write(JSON.stringify([process.versions, JSON.parse(s).map("
          "x => x.normalize('NFC'))])));")
    r = subprocess.run(["node", "-e", js], input=json.dumps(strings), capture_output=True,
                       text=True, encoding="utf-8", check=True)
    return json.loads(r.stdout)


def hexcp(s):
    return " ".join("%04X" % ord(c) for c in s)


def main():
    rng = random.Random(1400)
    rows = CASES + table_rows() + hangul_rows(rng) + random_strings(rng)
    rows = [(what, s) for what, s in rows if assigned(s)]
    versions, got = node_nfc([s for _, s in rows])
    print("# nfc_expect.tsv: %d strings and their NFC form, from Node %s's"
          % (len(rows), versions["node"]))
    print("# String.prototype.normalize(\"NFC\") (ICU %s, Unicode %s).  Every code point is"
          % (versions["icu"], versions["unicode"]))
    print("# assigned in Unicode %s, and Python's unicodedata (%s) agrees on every row."
          % (u.unidata_version, u.unidata_version))
    print("# Generated by tests/gen/gen_nfc_expect.py; do not edit by hand.")
    print("# columns: input code points (hex) TAB NFC code points (hex) TAB what")
    for (what, s), n in zip(rows, got):
        assert u.normalize("NFC", s) == n, (what, hexcp(s), hexcp(n))
        print("%s\t%s\t%s" % (hexcp(s), hexcp(n), what))


main()
