// Package output writes request events as aligned tables, JSON Lines and
// CSV, the sinks every kscope command shares. Strings that came from the
// wire (client ids, topic names, message ids) are escaped before they reach
// a terminal or a CSV cell; record payloads are never written.
package output
