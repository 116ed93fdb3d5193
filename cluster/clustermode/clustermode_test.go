package clustermode

import "testing"

func TestParseNodesAndServes(t *testing.T) {
	text := `07c37dfeb235213a872192d90877d0cd55635b91 127.0.0.1:30004@31004,host-a slave e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 0 1426238317239 4 connected
e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:30001@31001 myself,master - 0 0 1 connected 0-5460 6000 [5461->-292f8b365bb7edb5e285caf0b7e6ddc7265a2f4f]
292f8b365bb7edb5e285caf0b7e6ddc7265a2f4f 127.0.0.1:30003@31003 master,fail - 1426238316232 1426238314226 3 disconnected
`
	nodes, err := ParseNodes(text)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 3 {
		t.Fatalf("%d nodes, want 3", len(nodes))
	}
	replica, primary, failed := nodes[0], nodes[1], nodes[2]
	if replica.Addr != "127.0.0.1:30004" || replica.Primary != primary.ID || !replica.Has("slave") {
		t.Errorf("replica: %+v", replica)
	}
	if !primary.Has("master") || primary.Primary != "" || !failed.Has("fail") {
		t.Errorf("primary %+v, failed %+v", primary, failed)
	}
	for slot, want := range map[int]bool{0: true, 5460: true, 5461: false, 5999: false, 6000: true, 6001: false} {
		if got := primary.Serves(slot); got != want {
			t.Errorf("Serves(%d) = %v, want %v (a migrating slot is not served)", slot, got, want)
		}
	}
	if failed.Serves(0) {
		t.Error("a node without slots serves slot 0")
	}
	for _, bad := range []string{"", "abc 127.0.0.1:1@2 master"} {
		if _, err := ParseNodes(bad); err == nil {
			t.Errorf("ParseNodes(%q): no error", bad)
		}
	}
}
