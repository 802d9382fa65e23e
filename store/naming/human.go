package naming

import (
	"fmt"
	"math"
	"strings"
)

// Numbers as the reports print them for people: sizes with a binary unit,
// counts with thousands separators, similarities as percentages.

// DecimalSize is a size as the groups report prints it beside the bytes,
// as fclones does (decimal units, one decimal): "999 B", "110.6 KB".
func DecimalSize(n int64) string {
	if n < 1000 {
		return fmt.Sprintf("%d B", n)
	}
	f, units := float64(n), "KMGTPE"
	i := -1
	for f >= 1000 && i < len(units)-1 {
		f /= 1000
		i++
	}
	return fmt.Sprintf("%.1f %cB", f, units[i])
}

// HumanBytes formats a size with a binary unit: "512 B", "110.6 KiB".
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// Count formats an integer with thousands separators: "2,048".
func Count(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return s
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Counted is a count and a noun, singular for one: "1 file", "2,048 files".
func Counted(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return Count(n) + " " + many
}

// Round4 is a similarity (a fraction) to 4 decimals, as reports give it.
func Round4(f float64) float64 { return math.Round(f*10000) / 10000 }

// Percent is a similarity as a percentage with two decimals: "99.51".
func Percent(f float64) string { return fmt.Sprintf("%.2f", 100*Round4(f)) }
