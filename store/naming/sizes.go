package naming

import "fmt"

// DecimalSize is a size in the human form dupefs' reports print beside the
// bytes, as fclones does (decimal units, one decimal): "999 B", "110.6 KB",
// "13.6 MB".
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
