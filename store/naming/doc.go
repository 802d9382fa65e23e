// Package naming holds the names dupefs writes and reads that are not SQL:
// the hash algorithms and their hashers, group keys and the thumbnail file
// names made of them, when one path lies within or below another and how a
// folder and a name join, how a report escapes a path, the names and
// numbers shown to people (paths joined by " › ", sizes, counts), and the
// names nothing indexes (Trash cans and dupefs' own temporary files).
//
// It imports no other package of dupefs, so every package may import it;
// the index stores what these names say, but its SQL stays in package
// store.
//
//	names.go       hash algorithms and hashers, group keys, thumbnail
//	               names, path containment and joining
//	escape.go      paths escaped losslessly as UTF-8, and read back
//	people.go      where a file lives, said for people: root names, paths
//	               joined by " › ", shortened to 255 bytes, told apart
//	labels.go      the labels of the view's folders made for people
//	human.go       sizes, counts and similarities as reports print them
//	trashnames.go  Trash cans and temporary names
package naming
