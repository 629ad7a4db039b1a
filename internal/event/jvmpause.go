package event

import "strings"

// UnknownVMOperation is the Name of a safepoint whose VM operation the
// source does not name (JDK 11's safepoint log lines; a recording
// without jdk.ExecuteVMOperation).
const UnknownVMOperation = "(unknown)"

// gcOperations are the HotSpot VM operations (by the name safepoint logs
// and JFR's jdk.ExecuteVMOperation give them, JDK 11 to 21) that collect
// garbage.
var gcOperations = map[string]bool{
	"G1CollectForAllocation": true, "G1CollectFull": true, "G1PauseRemark": true, "G1PauseCleanup": true,
	"G1TryInitiateConcMark": true, "G1Concurrent": true, "G1IncCollectionPause": true,
	"CollectForMetadataAllocation": true, "CollectForCodeCacheAllocation": true,
	"ParallelGCFailedAllocation": true, "ParallelGCSystemGC": true, "ParallelCollectForAllocation": true, "ParallelSystemGC": true,
	"GenCollectForAllocation": true, "GenCollectFull": true, "GenCollectFullConcurrent": true, "SerialCollectForAllocation": true,
	"CMS_Initial_Mark": true, "CMS_Final_Remark": true,
}

// IsGCOperation reports whether the VM operation op is a garbage
// collection: a safepoint that ran it is a JVMPause of Type PauseGC even
// when the source says nothing of the collection itself.
func IsGCOperation(op string) bool {
	return gcOperations[op] || strings.HasPrefix(op, "Shenandoah") ||
		strings.HasPrefix(op, "ZMarkStart") || strings.HasPrefix(op, "ZMarkEnd") || strings.HasPrefix(op, "ZRelocateStart")
}
