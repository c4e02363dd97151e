#include "hw/driver/uart/serial_link.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "hw/spec/error.h"

namespace kiln::driver::uart {

namespace {

speed_t speed_of(int baud) {
  switch (baud) {
    case 9600: return B9600;
    case 19200: return B19200;
    case 38400: return B38400;
    case 57600: return B57600;
    case 115200: return B115200;
    case 230400: return B230400;
    case 460800: return B460800;
    case 921600: return B921600;
    case 1000000: return B1000000;
    case 2000000: return B2000000;
    case 3000000: return B3000000;
    default:
      throw hw::Error(fmt::format(
          "uart device: baud rate {} is not one termios supports here (9600, 19200, 38400, "
          "57600, 115200, 230400, 460800, 921600, 1000000, 2000000, 3000000); it must also "
          "match the bitstream's (board.json host_link.baud)",
          baud));
  }
}

std::string errno_text() { return std::strerror(errno); }

}  // namespace

SerialLink::SerialLink(const std::string& path, int baud, double run_timeout_s,
                       double frame_timeout_s)
    : path_(path), baud_(baud), run_timeout_s_(run_timeout_s), frame_timeout_s_(frame_timeout_s) {
  speed_t speed = speed_of(baud);
  fd_ = ::open(path.c_str(), O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) {
    throw hw::Error(fmt::format(
        "uart device: cannot open serial port {}: {} (is the board plugged in and the port "
        "right? the iCEBreaker's UART is FTDI channel B, usually /dev/ttyUSB1; set the port "
        "with --uart-port, DeviceOptions::uart_port)",
        path, errno_text()));
  }
  termios tio{};
  if (::tcgetattr(fd_, &tio) != 0) {
    std::string why = errno_text();
    ::close(fd_);
    throw hw::Error(fmt::format("uart device: {} is not a serial port: {}", path, why));
  }
  ::cfmakeraw(&tio);  // 8 data bits, no parity, no echo, no line discipline
  tio.c_cflag &= ~static_cast<tcflag_t>(CSTOPB | CRTSCTS);
  tio.c_cflag |= CLOCAL | CREAD;
  tio.c_cc[VMIN] = 0;
  tio.c_cc[VTIME] = 0;
  if (::cfsetispeed(&tio, speed) != 0 || ::cfsetospeed(&tio, speed) != 0 ||
      ::tcsetattr(fd_, TCSANOW, &tio) != 0) {
    std::string why = errno_text();
    ::close(fd_);
    throw hw::Error(fmt::format("uart device: cannot set {} to {} baud 8N1: {}", path, baud, why));
  }
  ::tcflush(fd_, TCIOFLUSH);
}

SerialLink::~SerialLink() {
  if (fd_ >= 0) ::close(fd_);
}

std::string SerialLink::name() const { return fmt::format("{} at {} baud", path_, baud_); }

void SerialLink::write(std::span<const uint8_t> bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0 && errno == EAGAIN) {
      pollfd p{fd_, POLLOUT, 0};
      ::poll(&p, 1, 100);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw hw::Error(fmt::format("uart device: writing to {}: {}", name(), errno_text()));
    bytes = bytes.subspan(static_cast<size_t>(n));
  }
}

void SerialLink::read(std::span<uint8_t> out) {
  // The bytes' time on the line at this baud, plus a second for the USB round trips.
  const auto budget = std::chrono::milliseconds(1000 + out.size() * 10 * 1000 / baud_);
  const auto deadline = std::chrono::steady_clock::now() + budget;
  size_t got = 0;
  while (got < out.size()) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      throw hw::Error(fmt::format(
          "uart device: {}: the board sent {} of {} bytes in {} ms (is the bitstream loaded, "
          "the port FTDI channel B and the baud rate the bitstream's?)",
          name(), got, out.size(), budget.count()));
    }
    pollfd p{fd_, POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw hw::Error(fmt::format("uart device: waiting on {}: {}", name(), errno_text()));
    if (r == 0) continue;
    ssize_t n = ::read(fd_, out.data() + got, out.size() - got);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) {
      throw hw::Error(fmt::format("uart device: reading from {}: {}", name(),
                                  n == 0 ? std::string("the port was closed") : errno_text()));
    }
    got += static_cast<size_t>(n);
  }
}

void SerialLink::resync() {
  ::tcdrain(fd_);
  std::this_thread::sleep_for(std::chrono::duration<double>(frame_timeout_s_ * 1.5));
  ::tcflush(fd_, TCIFLUSH);
}

void SerialLink::pause() { std::this_thread::sleep_for(std::chrono::milliseconds(1)); }

std::string SerialLink::run_hung() {
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start_).count();
  if (s <= run_timeout_s_) return "";
  return fmt::format("no done after {:.1f} s (DeviceOptions::uart_timeout_s is {:.1f} s)", s,
                     run_timeout_s_);
}

}  // namespace kiln::driver::uart
