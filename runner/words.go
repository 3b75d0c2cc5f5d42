package runner

import (
	"errors"
	"strings"
)

// SplitWords splits a command line into words the way a POSIX shell splits
// a simple command's words, and nothing more: blanks separate words; a
// backslash outside quotes keeps the next character as it is (a
// backslash-newline disappears); single quotes keep everything up to the next
// single quote; double quotes keep everything up to the next unescaped
// double quote, where a backslash escapes only $ ` " \ and newline. There is
// no expansion of any kind — $HOME, `cmd`, ~ and * stay as written — and no
// operators: ; | & < > are ordinary characters. For those, run the command
// through a shell explicitly: sh -c '…'.
func SplitWords(s string) ([]string, error) {
	var (
		words  []string
		word   strings.Builder
		inWord bool // a word has started, maybe empty ("" or '')
	)
	end := func() {
		if inWord {
			words = append(words, word.String())
			word.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case ' ', '\t', '\n':
			end()
		case '\\':
			if i+1 == len(s) {
				return nil, errors.New("the command ends with a lone backslash")
			}
			i++
			if s[i] != '\n' { // a backslash-newline joins lines
				word.WriteByte(s[i])
				inWord = true
			}
		case '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("a single quote is not closed")
			}
			word.WriteString(s[i+1 : i+1+j])
			inWord = true
			i += 1 + j
		case '"':
			inWord = true
			closed := false
			for i++; i < len(s); i++ {
				if s[i] == '"' {
					closed = true
					break
				}
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
					i++
					if s[i] == '\n' {
						continue
					}
				}
				word.WriteByte(s[i])
			}
			if !closed {
				return nil, errors.New("a double quote is not closed")
			}
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	end()
	return words, nil
}
