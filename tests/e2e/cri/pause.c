// e2e-pause: the process of the Kubernetes scenarios' pod sandbox (the "pause" container): it
// holds the pod's namespaces, reaps what is reparented to it and never forks (a restored container
// joins the new pod's pid namespace, and a forking sandbox process would take the pids criu must
// give back). Statically linked: the sandbox image holds this file and nothing else. SIGTERM and
// SIGINT end it.
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int sig) {
    (void)sig;
    _exit(0);
}

static void on_child(int sig) {
    (void)sig;
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
}

int main(void) {
    struct sigaction stop = {.sa_handler = on_stop};
    struct sigaction child = {.sa_handler = on_child, .sa_flags = SA_RESTART};
    sigaction(SIGTERM, &stop, NULL);
    sigaction(SIGINT, &stop, NULL);
    sigaction(SIGCHLD, &child, NULL);
    for (;;)
        pause();
}
