// Package console is rbd's web console: a page, served at /ui/, to watch
// runbooks move and to act on them (approve or reject a gate).
//
// Its files are embedded in the binary, plain HTML, CSS and JavaScript
// with no build step and no third-party code, so neither building nor
// running rbd needs a Node toolchain. The page holds no data of its own: it
// calls the same /v1 API as the rbd client commands, with the bearer token
// the user pastes, which it keeps in the tab's sessionStorage and sends
// only in the Authorization header.
package console
