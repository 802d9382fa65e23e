// Package naming holds the names dupefs writes and reads that are not SQL:
// the hash algorithms and their hashers, group keys and the thumbnail file
// names made of them, when one path lies within or below another and how a
// folder and a name join, how a report escapes a path and prints a size,
// the names the view made for people gives groups and copies, and the names
// nothing indexes (Trash cans and dupefs' own temporary files).
//
// It imports no other package of dupefs, so every package may import it;
// the index stores what these names say, but its SQL stays in package
// store.
//
//	names.go       hash algorithms and hashers, group keys, thumbnail
//	               names, path containment and joining
//	escape.go      paths escaped losslessly as UTF-8, and read back
//	sizes.go       sizes in the reports' human form
//	people.go      group labels and copies named by where they live
//	trashnames.go  Trash cans and temporary names
package naming
