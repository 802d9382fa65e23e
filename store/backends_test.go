package store

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/dupefs/dupefs/internal/pgtest"
)

// The store's tests run on both engines: each runs on SQLite as itself,
// and again on PostgreSQL as a subtest of TestPostgres, where openTest
// opens a fresh database of the test's own on a private server (pgtest).
// Every test is listed in onPostgres, with the reason it does not run
// there yet, if it does not: a test that is not listed fails
// TestEveryTestHasABackend rather than pass unseen.

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// postgresPrefix begins the names of the tests that run on PostgreSQL.
const postgresPrefix = "TestPostgres/"

// onPostgresTest reports whether tb runs on PostgreSQL.
func onPostgresTest(tb testing.TB) bool { return strings.HasPrefix(tb.Name(), postgresPrefix) }

// testIndex is where openTest opens tb's index: a new file, or a fresh
// PostgreSQL database.
func testIndex(tb testing.TB) string {
	if onPostgresTest(tb) {
		name, _, _ := strings.Cut(strings.TrimPrefix(tb.Name(), postgresPrefix), "/")
		usedPostgres.Store(name, true)
		// Every test's database starts as a copy of one migrated once.
		return pgtest.URLFrom(tb, "store", func(url string) error {
			db, err := Open(context.Background(), Options{Path: url})
			if err != nil {
				return err
			}
			return db.Close()
		})
	}
	return filepath.Join(tb.TempDir(), "index.db")
}

// usedPostgres holds the tests that opened a PostgreSQL index.
var usedPostgres sync.Map

// onPostgres lists every test of the package, with why it does not run on
// PostgreSQL ("" when it does): "SQLite only: …" for what PostgreSQL has
// no counterpart of, "not yet on PostgreSQL: …" for a subsystem still to
// port.
var onPostgres = []struct {
	test func(*testing.T)
	skip string
}{
	{TestCrossedKeepersAreRefused, ""},
	{TestHostNameOfAnotherMachineIsRefused, ""},
	{TestCheckHostName, "no database: checks names alone"},
	{TestRootsBelongToTheirHost, ""},
	{TestHostsClaimTheirOwnJobs, ""},
	{TestForgetHost, ""},
	{TestForgetHostRefusesALiveHost, ""},
	{TestForgetHostTakesItsFolderGroups, ""},
	{TestOneHostPerMachine, ""},
	{TestKeepersHoldAcrossHosts, ""},
	{TestLedgerWritesReachTheDiskOnSQLite, "SQLite only: PostgreSQL's ledger commits wait for the disk (TestPostgresLedgerWritesOutliveACrash)"},
	{TestInodeNumbersOfTwoHostsAreTwoInodes, ""},
	{TestTwoHostsHoldOnePath, ""},
	{TestFolderGroupsOrderOnePathByHost, ""},
	{TestInodeNumbersOfTwoHostsMakeNoFolderGroup, ""},
	{TestMigrationSumsOtherHostsAgain, ""},
	{TestTwoHostsPlanTheSameActionEach, ""},
	{TestImportMakesKeysTheHosts, ""},
	{TestViewNamesTheHostOfEachCopy, ""},
	{TestHalfHashedFilesAnotherHostMatchedAreOwed, ""},
	{TestBulkLoadOfTwoHostsTellsTheirInodesApart, ""},
	{TestOpenIndexOfRelease0013GivesItsRootsToTheHost, "SQLite only: upgrades of SQLite indexes of older releases"},
	{TestDoneTrashPinsItsKeptFileUntilTheCopyIsBack, ""},
	{TestActionStatesMoveOnlyForward, ""},
	{TestBytesDifferSendsInodesBackToTheHashJob, ""},
	{TestActionLeasesAreFenced, ""},
	{TestIndexFollowsActions, ""},
	{TestLedgerKeepsTrashNamesOfAnyBytes, ""},
	{TestNoBulkLoadOverFolders, ""},
	{TestBulkLoadAddsItsKeysAgain, ""},
	{TestBulkLoadWaitsForReadersWithoutDeadlock, ""},
	{TestSharedBulkLoadTellsHostsInodesApart, ""},
	{TestOpenEndsAStrandedBulkLoad, ""},
	{TestCheckpointerCopiesCommitsBack, "SQLite only: WAL checkpoints"},
	{TestCloseStopsTheCheckpointer, "SQLite only: WAL checkpoints"},
	{TestFoldStreamSumsAsFromScratch, ""},
	{TestFirstFoldBuildsItsIndexesAgain, ""},
	{TestFoldOfStandingIndexesWaitsForNoAnalyze, ""},
	{TestFirstIndexStatisticsInFull, ""},
	{TestInterruptedCloseWaitsForNothingBehind, ""},
	{TestBehindOpensTheURLThePoolsOpen, ""},
	{TestListenerOpensTheURLThePoolsOpen, ""},
	{TestFolderGroupsByClassEqualFromScratch, ""},
	{TestContentDigestsAsOneByOne, ""},
	{TestPreviewPlansAsThePlan, ""},
	{TestHashBatchStagedAsOneByOne, ""},
	{TestFolderChangeUnhidesSubfolderGroups, ""},
	{TestConfirmFoldersSplitsByWhatFoldersHold, ""},
	{TestFoldersOfRootAreItsFolderRows, ""},
	{TestFolderGroupsOwedByAKilledFold, ""},
	{TestDiffPairEqualsInMemory, ""},
	{TestPairListsKeepNamesOfAnyBytes, ""},
	{TestDiffPairsEqualDiffPair, ""},
	{TestKeptPairsEqualASearch, ""},
	{TestPairListNamesEnd, "no database: names in memory"},
	{TestScopeHoldsBoundedRows, ""},
	{TestPairsLeftOwedBySums, ""},
	{TestHiddenPairsBatched, ""},
	{TestPairListsBatched, ""},
	{TestPairListsRenamedBesideAMove, ""},
	{TestFoldStreamOddRows, ""},
	{TestSharedFilesNumbersContentsAndInodes, ""},
	{TestSharedFilesNumbersTiedPrefixes, ""},
	{TestSortedHashesAcrossBlocks, "no database: hashes in memory"},
	{TestSearchLikeItsDefinition, "no database: trees in memory"},
	{TestParseInts, "no database: texts in memory"},
	{TestReusableHashes, ""},
	{TestScopeSeedsLikeASearch, ""},
	{TestGroupsCountInodesNotPaths, ""},
	{TestReportKeysetCursor, ""},
	{TestParseKey, "no database: parses group keys"},
	{TestBulkLoadCountsGroupsByInode, ""},
	{TestBulkLoadRecordsKnownHashes, ""},
	{TestBulkLoadAndWritesCountGroupsAlike, ""},
	{TestBulkLoadSettlesUniqueSizesByInode, ""},
	{TestPlanHashLeavesOutSettledSmallBuckets, ""},
	{TestPlanHashPicksSharedSizesOnly, ""},
	{TestLoseFolderMarksSubtree, ""},
	{TestHashWriteRefusesABadSumLoudly, ""},
	{TestAllJobsPage, ""},
	{TestEnqueueKeepsOneActiveJob, ""},
	{TestEnqueueOfARemovedRootIsNotFound, ""},
	{TestClaimIsExclusive, ""},
	{TestClaimsOfTwoOpensAreExclusive, ""},
	{TestFenceRefusesALostLease, ""},
	{TestHeartbeatKeepsTheLease, ""},
	{TestKeepLeaseHoldsAndCancelsOnLoss, ""},
	{TestRecoverDeadWorker, ""},
	{TestRetryableWaitsAndRunsOutOfAttempts, ""},
	{TestJobsPageKeyset, ""},
	{TestLeaseWritesStampUpdatedAt, ""},
	{TestMigrateRepairsIndexesOfEditedMigrations, "SQLite only: upgrades of SQLite indexes of older releases"},
	{TestMigrateRepairsBulkLoadDefinition, "SQLite only: upgrades of SQLite indexes of older releases"},
	{TestLandedMigrationsAreNeverEdited, "SQLite only: checks both sets of files at once"},
	{TestOpenIndexOfRelease0006, "SQLite only: upgrades of SQLite indexes of older releases"},
	{TestOpenIndexOfRelease0012RebuildsFiles, "SQLite only: upgrades of SQLite indexes of older releases"},
	{TestMigrateLighterFilesDuringBulkLoad, "SQLite only: upgrades of SQLite indexes of older releases"},
	{TestOpenIndexOfRelease0010KeepsPairsAfterItsNextFold, "SQLite only: upgrades of SQLite indexes of older releases"},
	{TestReadOnlyOpenOnAReadOnlyFileSystem, "SQLite only: the index file, its folder and its modes"},
	{TestReadOnlyOpenRefusesAWALItCannotRead, "SQLite only: the index file, its folder and its modes"},
	{TestOpenRefusesFilesThatAreNoIndex, "SQLite only: the index file, its folder and its modes"},
	{TestOpeningANewIndexAtOnce, "SQLite only: the index file, its folder and its modes"},
	{TestReadOnlyOpenOfAnOlderIndex, "SQLite only: the index file, its folder and its modes"},
	{TestCheckFindsDamage, "SQLite only: the index file, its folder and its modes"},
	{TestCommitAfterCancelRollsBack, "SQLite only: the index file, its folder and its modes"},
	{TestIndexIsPrivate, "SQLite only: the index file, its folder and its modes"},
	{TestViewKeyIsMadeOnceAndKept, "SQLite only: the index file, its folder and its modes"},
	{TestIndexRefusesAPlaceOthersHold, "SQLite only: the index file, its folder and its modes"},
	{TestWastePageRanks, ""},
	{TestWastePageUsesItsIndex, "SQLite only: reads SQLite's query plan"},
	{TestPurgeMissingRows, ""},
	{TestPurgeBatchIsFenced, ""},
	{TestFailedReadWaitsWithBackoff, ""},
	{TestMigrationGivesTheLedgerRoles, "SQLite only: upgrades of SQLite indexes of older releases"},
	{TestAddRootCoveredAndAbsorbed, ""},
	{TestImportTakesOverHashesAndLedger, ""},
	{TestImportRefusesACrossedLedger, ""},
	{TestSourceRunUnderWay, "SQLite only: the index file, its folder and its modes"},
	{TestOpenSourceRefuses, "SQLite only: the index file, its folder and its modes"},
	{TestSourceRunUnderWaySeesAnUndo, "SQLite only: the index file, its folder and its modes"},
	{TestUndoHoldsThePlanLease, ""},
	{TestImportLedgerRefusesARunBegunMeanwhile, ""},
	{TestImportLedgerInRounds, ""},
	{TestRemoveRootForgetsItsRows, ""},
	{TestExcludePatternsKeepTheirBytes, ""},
	{TestLateHashesLandInAnyOrder, ""},
	{TestBatchWritesLandInOrderBesideACopy, ""},
	{TestNextFileIDIsTheRowsID, ""},
	{TestQueuedFoldersGetTheirIDs, ""},
	{TestPairWritesStagedEqualOneByOne, ""},
	{TestManyNewContentsInOneWriteAreGroups, ""},
	{TestMigrationsAreNumberedAndEmbedded, "SQLite only: the SQLite set of migrations (TestLandedMigrationsAreNeverEdited checks both)"},
	{TestOpenTwiceIsIdempotent, "SQLite only: the index file and its journal mode"},
	{TestOpenRefusesNewerSchema, ""},
	{TestOpenErrors, "SQLite only: paths that are no index file"},
	{TestHashAlgoFixedOnceHashed, ""},
	{TestDiskFullIsReported, "SQLite only: a full disk under the index file"},
	{TestCloseTellsAWALLeftOnAFullDisk, "SQLite only: a WAL on a full disk"},
	{TestSubtreeOfSlash, ""},
	{TestAdmissionIsBoundedAndOncePerGroup, ""},
	{TestThumbLeaseExpiresAndFences, ""},
	{TestFailedThumbWaitsForRetryAfter, ""},
	{TestCleanupWaitsForJobsAndSparesGroups, ""},
	{TestCleanupLeaseExpiresAndFences, ""},
	{TestReserveIOSpacesReservations, ""},
	{TestCandidatesFollowTheChangeFeedInPages, ""},
	{TestTrimJobs, ""},
	{TestWriterKeepsStatements, "SQLite only: the writer connection's kept statements"},
	{TestSeveralStatementsAreNotKept, ""},
	{TestCopiesPageFirstOfEachName, ""},
	{TestCopiesAheadAsFirstPages, ""},
	{TestToPostgres, "no database: checks the rewriting alone"},
	{TestPostgresBindsAsSQLiteNumbers, "no database: checks the binding alone"},
	{TestPgEscapeRoundTrips, "no database: checks the escapes alone"},
	{TestPostgresSessionNoticesADeadServer, "no database: checks the socket's options alone"},
	{TestOddNamesKeptAsTheyAre, ""},
	{TestTextSortsByBytes, ""},
	{TestWALJobsUniqueClaimAndStaleRecovery, "SQLite only: the WAL and its checkpoint jobs"},
	{TestTruncateWaitsForReaderWithoutStallingWriters, "SQLite only: the WAL and its checkpoint jobs"},
	{TestWatcherSeesCommits, ""},
	{TestWatcherListensAgainAfterARestart, ""},
	{TestPostgresRefusesAnOldServer, ""},
	{TestPostgresRefusedLoginSaysSo, ""},
	{TestPostgresWriterCommitsAsSQLiteNormal, ""},
	{TestPostgresLedgerWritesOutliveACrash, ""},
	{TestPostgresConnectionLostMidWriteIsServerGone, ""},
	{TestPostgresConnectionLostMidCopyIsServerGone, ""},
	{TestPostgresRefusesAnotherProgramsDatabase, ""},
}

// notYet begins the reason of a test whose subsystem is still to port;
// with DUPEFS_TEST_PG_ALL=1 such tests run on PostgreSQL all the same (to
// see what porting them takes).
const (
	notYet    = "not yet on PostgreSQL: "
	envTryAll = "DUPEFS_TEST_PG_ALL"
)

func TestPostgres(t *testing.T) {
	for _, c := range onPostgres {
		name := funcName(c.test)
		t.Run(name, func(t *testing.T) {
			if c.skip != "" && !(strings.HasPrefix(c.skip, notYet) && os.Getenv(envTryAll) != "") {
				t.Skip(c.skip)
			}
			c.test(t)
			if _, used := usedPostgres.Load(name); !used && !t.Skipped() {
				t.Errorf("%s opened no PostgreSQL index: list it as SQLite only, or open its index with openTest", name)
			}
		})
	}
}

// TestEveryTestHasABackend checks that every test of the package is in
// onPostgres.
func TestEveryTestHasABackend(t *testing.T) {
	listed := map[string]bool{}
	for _, c := range onPostgres {
		listed[funcName(c.test)] = true
	}
	fset := token.NewFileSet()
	names, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		f, err := parser.ParseFile(fset, n, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || !strings.HasPrefix(fd.Name.Name, "Test") {
				continue
			}
			switch fd.Name.Name {
			case "TestMain", "TestPostgres", "TestEveryTestHasABackend":
				continue
			}
			if !listed[fd.Name.Name] {
				t.Errorf("%s (%s) is not in onPostgres: list it, with the reason it does not run on PostgreSQL if it does not", fd.Name.Name, n)
			}
		}
	}
}

// funcName is the name of a test function.
func funcName(f func(*testing.T)) string {
	name := runtime.FuncForPC(reflect.ValueOf(f).Pointer()).Name()
	return name[strings.LastIndexByte(name, '.')+1:]
}
