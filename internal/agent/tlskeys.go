package agent

import (
	"context"
	"time"

	"github.com/kscope-dev/kscope/internal/keylogagent"
)

// attachKeyLog loads the extract-tls-secrets agent into a broker the
// tracer has just attached to (Config.TLSKeysAttach), so that it appends
// its TLS sessions' secrets to Config.TLSKeyLog (with keylogagent.HostDir
// there, to the JVM's own key log in it): the connections it
// accepts from then on are decrypted. It runs for every broker the tracer
// follows (a restarted broker is a new JVM without the agent), off the
// tracer's goroutine: jcmd takes seconds on a loaded host.
func (a *Agent) attachKeyLog(pid int) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	path := a.cfg.TLSKeyLog
	var err error
	if path == keylogagent.HostDir {
		path, err = keylogagent.AttachHost(ctx, pid)
	} else {
		err = keylogagent.Attach(ctx, pid, path)
	}
	a.mu.Lock()
	a.keyLog.set(err == nil, err)
	a.mu.Unlock()
	if err != nil {
		a.logf("TLS keys: loading the key-log agent into pid %d: %v", pid, err)
		return
	}
	a.logf("TLS keys: key-log agent loaded into pid %d: its TLS connections from now on are decrypted (keys in %s)", pid, path)
}
