// Package grouphold splits the time a consumer group's coordination
// request spent at its coordinator into the part the group protocol held
// it and the coordinator's own part, as internal/fetchsplit does with a
// fetch's purgatory.
//
// The classic protocol holds two requests on purpose: a JoinGroup is
// answered when every member has joined (and a group that was empty
// waits group.initial.rebalance.delay.ms for more members), and a
// follower's SyncGroup when the leader has sent the assignment. What is
// left, from the later of when the broker could read the request and
// when the hold ended, to the response, is the coordinator's own work:
// for the leader's SyncGroup, storing the assignment in
// __consumer_offsets; a slow disk, a garbage-collection pause or a
// starved CPU there delays the whole group. No other group request is
// held (Heartbeat, LeaveGroup, OffsetCommit, KIP-848's
// ConsumerGroupHeartbeat): their whole broker time is the coordinator's.
//
// The split needs the other members' requests, so a Splitter takes the
// group requests first (Add) and splits any of them afterwards (Split).
// What it keeps is bounded (MaxGroups, MaxGenerations, MaxJoinsTotal,
// MaxRecentTotal): its memory does not grow with a long or hostile stream.
package grouphold
