// Package cicy is the headless runtime of cicy panes: the turn loop, role
// templates, byte-stable prompt assembly with its cache breakpoints
// (docs/requests-and-caching.md), history on disk, /compact and /clear, and
// the memory loop. The LLM providers, the built-in tools and the memory
// store are its subpackages.
package cicy
