// Package loopfs gives tests a real file system of a chosen kind (btrfs,
// xfs, ext4) in a sparse image mounted through a loop device, for what a
// tmpfs cannot show: extents shared by FIDEDUPERANGE, a file system's own
// Trash, fanotify marks on another file system, a block device's flags.
// It is the one place tests make and tear down such mounts.
//
// Mount is all of it: it skips a test not run as root, makes the image in
// the test's temporary folder (sparse, so its size costs no disk), runs
// the kind's mkfs, mounts it with mount -o loop and registers a cleanup
// that unmounts (lazily when busy) and makes sure the loop device is
// detached, so neither outlives the test even when it fails. The images
// are small (DefaultSize, 320 MB, what xfs needs at least), and a test may
// ask for another size.
//
// It is a package of its own, and not a test file, so that the tests of
// integration, indexer/act and indexer/watch share it; nothing else
// imports it.
package loopfs
