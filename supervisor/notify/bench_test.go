package notify_test

import (
	"context"
	"testing"

	"github.com/cicy-ai/cicy-agent/supervisor/notify"
	"github.com/cicy-ai/cicy-agent/supervisor/notify/notifytest"
)

// BenchmarkSend is one delivery to each local fake sink (a signed
// webhook, ntfy, Slack, Telegram with buttons): what a sink adds to the
// needs-you → message latency, the network aside.
func BenchmarkSend(b *testing.B) {
	hook, ntfy, slack := notifytest.NewWebhook(b), notifytest.NewNtfy(b), notifytest.NewSlack(b)
	tg := notifytest.NewTelegram(b, botToken)
	for _, s := range []notify.Sink{
		{Name: "webhook", Type: notify.TypeWebhook, URL: hook.URL, Secret: hookSecret},
		{Name: "ntfy", Type: notify.TypeNtfy, URL: ntfy.URL, Secret: ntfyToken},
		{Name: "slack", Type: notify.TypeSlack, Secret: slack.URL},
		{Name: "telegram", Type: notify.TypeTelegram, URL: tg.URL, Chat: "42", Secret: botToken},
	} {
		b.Run(s.Name, func(b *testing.B) {
			x := &notify.Sender{}
			e := approval()
			for b.Loop() {
				if _, err := x.Send(context.Background(), s, e); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
