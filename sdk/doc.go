// Package sdk is the Go client of the airlock daemon (`airlock serve`): it
// creates sandboxes, runs commands in them with their output streamed back,
// and reads the records the daemon keeps. It speaks the HTTP API of
// docs/api.md, by default on the daemon's unix socket
// ($AIRLOCK_SOCKET, else /run/airlock/airlock.sock). Its request and answer
// types are package wire's (the same types under the names here), and it
// imports nothing else of airlock.
//
// Usage:
//
//	c, err := sdk.New() // or sdk.New(sdk.WithSocket("/path/to/airlock.sock"))
//	if err != nil {
//		return err
//	}
//	sb, err := c.CreateSandbox(ctx, sdk.CreateRequest{
//		Limits: sdk.Limits{MemoryBytes: 512 << 20},
//		TTL:    time.Hour,
//	})
//	if err != nil {
//		return err
//	}
//	defer c.DestroySandbox(ctx, sb.ID)
//
//	st, err := c.Exec(ctx, sb.ID, sdk.ExecRequest{
//		Argv:    []string{"/bin/sh", "-c", "make test"},
//		Timeout: 5 * time.Minute,
//	}, os.Stdout, os.Stderr)
//	if err != nil {
//		return err // the command could not run: sdk.IsNotFound(err), ...
//	}
//	if st.Limit != "" {
//		log.Printf("hit the %s limit", st.Limit)
//	}
//	fmt.Println("exit status", st.Code)
//
// Every error the daemon answers is an *Error, with the API's code
// (not_found, conflict, invalid, ...); test it with IsNotFound, IsConflict,
// IsInvalid and the other Is functions, or errors.As. When the daemon
// cannot be reached at all, the error says so and names the socket.
//
// A Client is safe for concurrent use.
package sdk
