package plan

// External names Redis servers a plan runs on that locklab did not start
// (`locklab run --external-lock`, `--external-store`, `--external-ca`): each a host:port
// or a redis:// or rediss:// URL. A plan never holds a secret: `locklab run` records
// every URL with its password replaced by access.Redacted ("xxxxx"), and when the plan
// runs again such a password must come from the environment (LOCKLAB_REDIS_PASSWORD);
// without it the run stops and says so. Only `locklab run` uses this section; its flags
// take precedence over it.
type External struct {
	Lock  []string `json:"lock"`
	Store string   `json:"store"`
	CA    string   `json:"ca,omitempty"` // the CA bundle (PEM) rediss:// servers are checked against
}
