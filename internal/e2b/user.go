package e2b

import "github.com/airlock-dev/airlock/internal/runtime"

// E2B's sandboxes run code as "user", home /home/user, and its docs, SDK
// tests and agents assume both: the door's sandboxes are called so. It
// is a name only: underneath is airlock's unprivileged command user (the
// backends' uid, never root); a request to act as anyone else, root
// included, is refused (checkUser).
const (
	// UserName is the sandbox user's name (whoami, USER, the SDKs' user).
	UserName = "user"
	// Home is the sandbox user's home: relative paths and the default
	// working directory, as E2B's /home/user is.
	Home = "/home/" + UserName
)

// sandboxUser is the command user the door's sandboxes are created with.
var sandboxUser = runtime.User{Name: UserName, Home: Home}
