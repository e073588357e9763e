// strings.js — the test strings shared by gen_gpt2.js and gen_llama2c.js.
//
// Each entry is either a JS string (valid UTF-8 once encoded) or
// {hex: "..."} for raw bytes that need not be valid UTF-8.  The C tests read
// the generated tables, never this file.
"use strict";

const english = [
	"", "a", "A", " ", "Hello", "Hello world", "Hello, world!", "hello world\n",
	"The quick brown fox jumps over the lazy dog.",
	"THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG",
	"It was the best of times, it was the worst of times.",
	"To be, or not to be, that is the question:",
	"Once upon a time, there was a little girl named Lily.",
	"She liked to play with her ball in the park every day.",
	"One day, Tom and Sue went to the beach to build a sandcastle.",
	"Mr. Smith's dog doesn't like Mrs. Jones' cat.",
	"e.g. i.e. etc. vs. U.S.A. Ph.D.",
	"antidisestablishmentarianism", "supercalifragilisticexpialidocious",
	"pneumonoultramicroscopicsilicovolcanoconiosis",
	"Attention is all you need.", "attention heads", " attention", "  attention",
	"transformer", "Transformer", " Transformer", "TRANSFORMER",
	"GPT-2 small has 12 layers, 12 heads and 768 dimensions.",
	"What's up? Who's there? Where're you going?",
	"I'm, you're, he's, we've, they'll, she'd, it's",
	"I'M YOU'RE HE'S WE'VE THEY'LL SHE'D",
	"don't won't can't shouldn't wouldn't",
	"'s 't 're 've 'm 'll 'd", "''", "'''", "'", "' s", "'S", "'ll've",
	"rock 'n' roll", "O'Neil", "y'all'd've", "’s curly apostrophe’s",
	"\"quoted\" text", "«guillemets»", "(parentheses) [brackets] {braces}",
	"well-known state-of-the-art", "em—dash en–dash", "ellipsis… and...",
	"Email: someone@example.com, URL: https://example.org/path?q=1&r=2#frag",
	"#hashtag @mention $dollar %percent ^caret &amp *star",
	"newline\nnewline", "carriage\r\nreturn", "tab\tseparated\tvalues",
	"Mixed CASE and camelCase and snake_case and kebab-case",
	"The end.", "The end.\n", "The end.\n\n", "\n", "\n\n", "\r\n",
];

const code = [
	"int main(void) { return 0; }",
	"#include <stdio.h>\n\nint main(void)\n{\n\tprintf(\"hello\\n\");\n\treturn 0;\n}\n",
	"def f(x):\n    return x * 2\n",
	"for (int i = 0; i < n; i++) {\n        sum += a[i] * b[i];\n}",
	"if x == 1 and y != 2 or not z:\n\tpass",
	"const add = (a, b) => a + b; // arrow",
	"SELECT * FROM users WHERE id = 42;",
	"<html><body><p class=\"x\">Hi</p></body></html>",
	"{\"key\": [1, 2.5, -3e10, true, null]}",
	"x+=1;y-=2;z*=3;w/=4;v%=5;",
	"a->b.c::d<e>f", "std::vector<std::string> v;", "0x7fffffff 0b1010 0o777",
	"    indented four", "        indented eight", "\t\ttwo tabs",
	"__init__ __name__ __main__", "$HOME/.cache/huggingface/hub",
	"git commit -m 'fix: off-by-one in rope_forward'",
	"// comment\n/* block */\n# hash", "!=  ==  <=  >=  &&  ||  <<  >>",
	"λx.x", "fn main() { println!(\"{}\", 1 + 1); }",
];

const whitespace = [
	"  ", "   ", "    ", "     ", "          ", " \n", "\n ", " \n ", "\n\n\n",
	"\t", "\t\t", " \t", "\t ", "a  b", "a   b", "a    b", "a \n b", "a\n\nb",
	"a \tb", "trailing space ", "trailing spaces   ", "   leading spaces",
	" leading space", "multiple   spaces   between   words",
	"line one\n  line two\n    line three", "\u00a0nbsp", "a\u00a0b", "a\u2003b",
	"ideographic\u3000space", "\u2028line separator", "\u2029paragraph separator",
	"\u000b vertical tab", "\f form feed", "\u0085 next line",
	"\u1680 ogham space", "\u180e mongolian vowel separator", "\u200b zero width space",
	"\ufeff BOM", "x\u202fy", "x\u205fy",
];

const digits = [
	"0", "1", "12", "123", "1234", "12345", "123456789", "1234567890123456789",
	"3.14159", "2.718281828", "-42", "+7", "1,000,000", "1.000.000,00",
	"1e-5", "6.02e23", "10000", "50257", "2024-03-26", "12:34:56",
	"Room 101, floor 7", "v1.2.3", "4.0.0-rc1", "100%", "$19.99", "€20", "½ ¾ ⅓",
	"٣٤٥ arabic-indic", "१२३ devanagari", "①②③ circled", "Ⅻ roman", "²³ superscripts",
	"０１２ fullwidth",
];

const unicode = [
	"café", "naïve résumé", "Zürich Straße", "Ærøskøbing", "ñandú", "Ελληνικά",
	"Привет, мир!", "Здравствуйте", "שלום עולם", "مرحبا بالعالم", "हिन्दी भाषा",
	"ภาษาไทย", "한국어 텍스트", "日本語のテキスト", "カタカナ", "ひらがな",
	"中文", "你好，世界！", "床前明月光，疑是地上霜。", "举头望明月，低头思故乡。",
	"全唐诗", "我爱自然语言处理", "注意力机制", "Attention 注意力 mechanism",
	"繁體中文與简体中文", "𠀀𠀁 extension B", "Tiếng Việt", "Türkçe ğüşıöç",
	"Ωμέγα", "ℕ ℤ ℚ ℝ ℂ", "∀x∈ℝ: x²≥0", "→ ← ↑ ↓ ⇒", "™ © ®", "° ± × ÷",
	"ﬁ ligature", "Å Å", "e\u0301 combining", "🙂", "😀😃😄", "👍🏽",
	"👨‍👩‍👧‍👦 family", "🇫🇷🇩🇪 flags", "❤️", "I ❤️ NLP 🤖!", "🎉🎉🎉 party",
	"emoji🙂inside", "♠♥♦♣", "☃ snowman", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "𝐛𝐨𝐥𝐝",
	"Ｆｕｌｌｗｉｄｔｈ", "ｶﾀｶﾅ halfwidth",
];

// Valid UTF-8 that looks broken or special: replacement characters, escapes
// written out, mojibake, control characters, byte-map code points, specials.
const odd = [
	"\ufffd", "\ufffd\ufffd", "a\ufffdb", "\\xe5\\xba", "<e5 ba>", "<0x0A>", "<s>", "</s>",
	"<|endoftext|>", "a<|endoftext|>b", "<unk>", "Ã©tÃ©", "â€™", "Ä ", "Ġ", "Ċ", "ĠĠ",
	"\u0000", "a\u0000b", "\u0001\u0002\u0003", "\u001b[31mred\u001b[0m", "\u007f",
	"\u0080", "\u009f", "\u00ad soft hyphen", "\u200d zwj", "\u2060 word joiner",
	"\u{10ffff}", "\ue000 private use", "\u{e0001} tag", "\\n not a newline",
	"%s %d %%", "\\u00e9", "&#233; &eacute;",
];

// Bytes that are not valid UTF-8: each bad byte becomes U+FFFD.
const invalid = [
	{ hex: "e5ba" },                 // truncated 3-byte sequence
	{ hex: "ff" }, { hex: "fe ff" }, { hex: "80" }, { hex: "c0af" }, // overlong '/'
	{ hex: "e080af" },               // overlong
	{ hex: "eda080" },               // UTF-16 surrogate D800
	{ hex: "f4908080" },             // past U+10FFFF
	{ hex: "68656c6c6fff776f726c64" }, // "hello\xffworld"
	{ hex: "20e5ba20" },
	{ hex: "e5bae5ba8a" },           // truncated then 床
	{ hex: "c3" }, { hex: "c328" }, { hex: "a0a1" }, { hex: "f0288cbc" },
];

function generated() {
	const out = [];
	for (let n = 1; n <= 12; n++)
		out.push(" ".repeat(n) + "x");
	for (let n = 1; n <= 6; n++)
		out.push("x" + "\n".repeat(n) + "y");
	for (let n = 2; n <= 5; n++)
		out.push("a" + " ".repeat(n) + "\n" + " ".repeat(n) + "b");
	for (const d of ["7", "42", "999", "2048", "65536"])
		out.push("x" + d + "y", d + " " + d, " " + d);
	out.push("a".repeat(100), "ab".repeat(50), " ".repeat(100), "\n".repeat(40),
		"1".repeat(64), "!".repeat(30), "🙂".repeat(10), "中".repeat(20),
		"na".repeat(8) + " batman");
	return out;
}

const all = [...english, ...code, ...whitespace, ...digits, ...unicode, ...odd,
	...generated(), ...invalid];

// Bytes of one entry.
function bytesOf(s) {
	if (typeof s === "string")
		return Buffer.from(s, "utf8");
	return Buffer.from(s.hex.replace(/ /g, ""), "hex");
}

// The text the encoders see: each byte that does not start a valid UTF-8
// sequence becomes U+FFFD (one per byte), exactly as attnscope's
// utf8_decode() rule in src/tokenizer.c.  Returns [text, replaced count].
function replaceInvalid(b) {
	let out = "", bad = 0;
	for (let i = 0; i < b.length;) {
		const c = b[i];
		let need = -1, min = 0, cp = 0;
		if (c < 0x80) { out += String.fromCodePoint(c); i++; continue; }
		if (c >= 0xc2 && c <= 0xdf) { need = 1; min = 0x80; cp = c & 0x1f; }
		else if (c >= 0xe0 && c <= 0xef) { need = 2; min = 0x800; cp = c & 0x0f; }
		else if (c >= 0xf0 && c <= 0xf4) { need = 3; min = 0x10000; cp = c & 0x07; }
		let ok = need > 0 && i + need < b.length;
		for (let k = 1; ok && k <= need; k++) {
			if ((b[i + k] & 0xc0) !== 0x80) ok = false;
			else cp = (cp << 6) | (b[i + k] & 0x3f);
		}
		if (ok && (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)))
			ok = false;
		if (!ok) { out += "\ufffd"; bad++; i++; continue; }
		out += String.fromCodePoint(cp);
		i += need + 1;
	}
	return [out, bad];
}

module.exports = { all, bytesOf, replaceInvalid };
