package supervisor

import (
	"github.com/sirupsen/logrus"

	"github.com/cicy-ai/cicy-agent/cicy/provider"
)

// ScrubLog wraps a log formatter so that no line it writes carries a
// provider credential of the environment getenv reads or a pane's gateway
// token, whatever the line quotes (an upstream error that echoes the key,
// a field, a wrapped error).
func ScrubLog(f logrus.Formatter, getenv func(string) string) logrus.Formatter {
	return scrubFormatter{inner: f, scrub: newScrubber(getenv)}
}

// newScrubber removes the provider credentials getenv reads and the panes'
// gateway tokens.
func newScrubber(getenv func(string) string) *provider.Scrubber {
	return provider.NewScrubber(getenv, provider.Pattern{Prefix: paneTokenPrefix, Re: paneTokenRe})
}

type scrubFormatter struct {
	inner logrus.Formatter
	scrub *provider.Scrubber
}

func (f scrubFormatter) Format(e *logrus.Entry) ([]byte, error) {
	b, err := f.inner.Format(e)
	return f.scrub.Bytes(b), err
}
