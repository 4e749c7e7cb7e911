package caddymodule

// The mutations of keys and limits that the admin API and the console
// share are gateway.Shared's (CreateKey, SetLimits…), each recorded in
// the audit trail; the actor comes from ctx (audit.WithActor), set by
// admin.API.Routes for the admin API (through admin_services.go) and by
// Console.ServeHTTP for the console.
