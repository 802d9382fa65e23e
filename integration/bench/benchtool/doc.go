// Command benchtool supports `make bench`: it generates the benchmark trees,
// measures the floors dupefs is held to, and compares the duplicate sets
// that dupefs and the peers report.
//
//	benchtool mktree -dir D -files N [-seed S] [-avg BYTES]
//	benchtool mkphotos -dir D [-files N] [-edits N] [-seed S]
//	benchtool mkgroups -dir D -groups N [-copies C]
//	benchtool mksizes -dir D -files N [-per-folder N]  (sparse files of distinct sizes)
//	benchtool mkfolders -dir D -folders N
//	benchtool latency -mnt M -tree T -seed F -group by-hash/KEY [-n N]
//	benchtool appear -dir MOUNT/by-hash -name KEY [-every 10ms] -- CMD...  (another process's commit to the view)
//	benchtool churnprep -dir D; benchtool churn -dir D -mnt M [-rate N] [-secs S] [-probes N]
//	benchtool settle -db INDEX -out LOG [-pid P]; benchtool converged -log LOG -since T -fresh INDEX
//	benchtool compare A B      (two reports in the fdupes blank-line format)
//	benchtool median V...      (median of numbers)
//	benchtool statwalk -dir D  (the system calls a re-index cannot skip)
//	benchtool fusefloor -tree T -mnt M  (T served over FUSE from memory)
//	benchtool sqlfloor -from INDEX -db NEW [-times FILE]  (the SQLite work of a first index alone)
//
// The scripts beside it (integration/bench/bench.sh and its bench-*.sh
// parts) run it; their tables, dated, with the commit they measured, go to
// integration/bench/RESULTS.md. It is a tool, not part of dupefs: it
// imports store only to replay an index's rows (sqlfloor) and to read the
// totals of an index a mount keeps (settle, converged).
//
// The generators make the same tree from the same arguments and -seed, so
// runs on two builds measure the same work: a home-like tree (mktree),
// photos with copies and same-size edits that differ only in the middle
// (mkphotos), an index of many groups for the mount bench (mkgroups),
// sparse files of distinct sizes for the memory of an index per size
// (mksizes), and projects with whole and edited copies for the folder
// report (mkfolders).
//
// The floors are what no implementation can beat on the machine, so the
// bench can say how far dupefs is from them: statwalk makes only the
// system calls any re-index must make; sqlfloor writes a finished index's
// rows into a new one through the scan's own write path, with every hash
// already known, which is less than any first index writes through the one
// writer SQLite allows; fusefloor serves a tree from memory over FUSE the
// way the mount answers, the round trips alone. compare checks that dupefs
// finds the duplicate set jdupes -r finds, latency how long a change on
// disk takes to show in a mounted view, and appear how long another
// process's commit (another host's, through PostgreSQL) takes to show
// there; churn makes random changes at a steady rate and times some of
// them through the view, settle logs an index's totals until they stop
// moving, and converged says when they first equalled a fresh index's for
// good.
//
// The files, by concern:
//
//	main.go       the commands; mktree, mkphotos, mkgroups, compare, median
//	mksizes.go    mksizes
//	mkfolders.go  mkfolders
//	statwalk.go   statwalk
//	sqlfloor.go   sqlfloor
//	fusefloor.go  fusefloor
//	latency.go    latency, appear
//	churn.go      churnprep, churn
//	settle.go     settle, converged
package main
