package httpapi

// APIRoutes lists the server's token-checked routes, for tests.
func APIRoutes(s *Server) []string { return s.apiRoutes }

// RouteRoles is the role each token-checked route needs, for tests.
func RouteRoles() map[string]Role { return routeRoles }
