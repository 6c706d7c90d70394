package wgtun_test

import (
	"log"

	"golang.zx2c4.com/wireguard/conn"
	"golang.zx2c4.com/wireguard/device"
	"golang.zx2c4.com/wireguard/tun"

	"github.com/aqmkit/aqmkit/aqm"
	"github.com/aqmkit/aqmkit/examples/wgtun"
)

// Shape a WireGuard interface's outgoing traffic to 95 Mbit/s through
// FQ-CoDel. (Compiled, not run: creating a TUN device needs privileges.)
func Example() {
	dev, err := tun.CreateTUN("wg0", 1420)
	if err != nil {
		log.Fatal(err)
	}
	shaped, err := wgtun.New(dev, wgtun.Config{
		Rate:          95 * aqm.Mbit,      // a little below the uplink
		Algorithm:     wgtun.FQCoDel,      // or wgtun.DualPI2
		OverheadBytes: wgtun.OverheadIPv4, // WireGuard + UDP + outer IPv4
	})
	if err != nil {
		log.Fatal(err)
	}
	wg := device.NewDevice(shaped, conn.NewDefaultBind(), device.NewLogger(device.LogLevelError, ""))
	defer wg.Close() // closes shaped, which closes dev
	// ... configure peers with wg.IpcSet, then wg.Up()
}
